"""Operators' repairs: the allocation audit and heal_allocations."""
