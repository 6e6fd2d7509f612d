from paleozoic.cli import program

program()
