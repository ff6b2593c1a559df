from gaplab.cli import main

raise SystemExit(main())
