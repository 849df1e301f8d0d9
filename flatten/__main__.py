from flatten.cli.flatten import main

main()
