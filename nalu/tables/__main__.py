from nalu.tables import main

main()
