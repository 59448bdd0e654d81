"""One module per URL noun of the network API."""
