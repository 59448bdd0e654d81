"""The conductor: build (and later move) tasks that span the scheduler, the cells and computes."""
