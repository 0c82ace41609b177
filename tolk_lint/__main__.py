from tolk_lint.cli import main

main()
