"""The trait names a port's resource request asks for, and the ones a host's network-device
providers carry: both sides must spell them the same way, so they are made here only.

Neutron's rule (neutron-lib ``placement.utils``): ``CUSTOM_`` + the name upper-cased
with every run of characters other than letters and digits made one ``_``, which is
what ``os_traits.normalize_name`` does.
"""

from __future__ import annotations

import os_traits

# Required by the bandwidth group of a port on a tunnelled network (no physnet): the
# providers of tunnel endpoints carry it.
TUNNEL_TRAIT = "CUSTOM_NETWORK_TUNNEL_PROVIDER"


def physnet_trait(physnet: str) -> str:
    """``physnet1`` -> ``CUSTOM_PHYSNET_PHYSNET1``;
    ``phys-net.A`` -> ``CUSTOM_PHYSNET_PHYS_NET_A``."""
    return str(os_traits.normalize_name(f"PHYSNET_{physnet}"))


def vnic_type_trait(vnic_type: str) -> str:
    """``direct-physical`` -> ``CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL``."""
    return str(os_traits.normalize_name(f"VNIC_TYPE_{vnic_type}"))
