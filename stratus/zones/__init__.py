"""Zones: a tree of Stratus deployments scheduled by zone managers over the bus (design
document 003). Not availability zones: those are groups of hosts inside one deployment.
A leaf zone is a whole Stratus (its own Placement, scheduler, cells, computes); a
parent zone runs only a zone manager. See docs/architecture.md, "Zones"."""
