from flatten.cli.start import main

main()
