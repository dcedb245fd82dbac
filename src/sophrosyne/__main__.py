from sophrosyne.cli.entry import main

main()
