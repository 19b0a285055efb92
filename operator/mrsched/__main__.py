from mrsched.cli import main

main()
