from flatten.cli.app import main

main()
