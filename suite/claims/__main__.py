from suite.claims.report import main

main()
