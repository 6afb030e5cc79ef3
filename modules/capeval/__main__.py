from capeval.cli import main

raise SystemExit(main())
