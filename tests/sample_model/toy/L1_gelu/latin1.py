# café
