"""The compute plane: host shapes and fleets, simulated hypervisor drivers (service and
resource tracker come later). Pure Python: no database, no HTTP."""
