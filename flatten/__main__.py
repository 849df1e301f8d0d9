from flatten.cli import main

main()
