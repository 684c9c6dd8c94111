from tftrace.cli import main

raise SystemExit(main())
