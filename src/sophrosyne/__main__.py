from sophrosyne.cli.app import main

main()
