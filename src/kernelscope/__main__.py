from kernelscope.cli import main

raise SystemExit(main())
