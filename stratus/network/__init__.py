"""The network service: a Neutron-shaped API for networks, ports, QoS and port bindings,
whose ports carry resource requests the scheduler places (design document 004)."""
