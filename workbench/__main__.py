"""``python -m workbench`` runs the command line."""

from workbench.cli import main

main()
