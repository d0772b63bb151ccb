from suite.tables import main

main()
