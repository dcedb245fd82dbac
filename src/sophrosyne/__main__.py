from sophrosyne.cli import main

main()
