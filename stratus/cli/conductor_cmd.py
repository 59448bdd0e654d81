"""``stratus conductor``: the conductor service as its own process.

It answers ConductorRPC (build_instances, reschedule) until SIGTERM or Ctrl-C:
asks the scheduler over the bus, writes instances into their cell's database,
and casts builds to computes on each cell's bus.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from typing import Any

from stratus.cli import common
from stratus.cli.scheduler_cmd import (
    add_network_arg,
    add_service_args,
    announce_metrics,
    api_engine,
    cell_cache,
    control_heartbeat,
    key_name,
    network_client,
    open_bus,
    periodically,
    placement_client,
    server_name,
    service_config,
    wait_for_stop,
)


def add_commands(sub: Any) -> None:
    p = common.add_parser(
        sub, "conductor",
        help="run the conductor service (ConductorRPC on the bus)",
        description="Run the conductor: build servers (schedule, record them in their cell, "
        "start them on a compute), reschedule failed spawns onto alternates, and put servers "
        "no host would take in ERROR in cell0. SIGHUP reloads its cached cell list. Stops "
        "cleanly on SIGTERM or Ctrl-C.",
    )
    add_service_args(p)
    add_network_arg(p)
    p.set_defaults(func=cmd_conductor)


def cmd_conductor(args: argparse.Namespace) -> int:
    from stratus import signed_bus
    from stratus.bus import Bus
    from stratus.cells import notify
    from stratus.cells.engines import CellEngines
    from stratus.cells.heartbeat import CONDUCTOR_BINARY
    from stratus.cli.compute_cmd import image_writer
    from stratus.conductor.build import ConductorContext
    from stratus.conductor.build_recovery import recover_builds
    from stratus.conductor.leases import BuildLeases
    from stratus.conductor.manager import CellBuses, ConductorManager, compute_cap
    from stratus.conductor.reclaim import reclaim
    from stratus.conductor.recovery import recover_moves
    from stratus.conductor.rpcapi import ConductorRPC
    from stratus.scheduler.rpcapi import SchedulerRPC

    config = service_config(args)
    name = server_name(args)
    announce_metrics(f"conductor {name}", args)
    engine = api_engine(config, args.sync_db)
    placement = placement_client(config)
    network = network_client(config)
    identity = f"conductor:{key_name(args)}"
    engines = CellEngines()
    # [bus] signing = transition: the computes of the release before signing, by their
    # service records, may send unsigned (their reschedules and replies).
    bus: Bus = open_bus(config, identity, old_computes=signed_bus.old_computes(engine, engines))
    buses = CellBuses(bus, identity=identity,
                      compute_cap=compute_cap(str(config.get("upgrade_levels", "compute")),
                                              engine, engines))
    leases = BuildLeases(engine, float(config.get("conductor", "build_lease_seconds")))

    # The cell mappings, cached as the scheduler caches them (a boot read its cell's from
    # the API database each time).
    cells = cell_cache(config, engine)
    ctx = ConductorContext(api_engine=engine, engines=engines, placement=placement,
                           scheduler=bus.client(SchedulerRPC), compute=buses.compute_client,
                           network=network, image=image_writer(config), leases=leases,
                           cells=cells, **ConductorContext.options(config))
    heartbeat = control_heartbeat(config, engine, engines, CONDUCTOR_BINARY,
                                  ConductorRPC.version)
    try:
        leases.start()
        bus_url = str(config.get("DEFAULT", "transport_url"))
        # Also the cell conductor of the cells on this bus: their computes' records.
        bus.serve(ConductorRPC, ConductorManager(ctx, bus_url, bus_url), server=name)
        heartbeat.start()
        move_after = dt.timedelta(seconds=config.get("conductor", "stuck_move_after"))
        recovered = recover_moves(ctx, move_after)
        if recovered:
            print(f"conductor {name}: took over {len(recovered)} unfinished move(s)",
                  flush=True)
        stuck_after = dt.timedelta(seconds=config.get("conductor", "stuck_build_after"))
        interval = float(config.get("conductor", "recovery_interval"))

        reclaim_after = int(config.get("DEFAULT", "reclaim_instance_interval"))

        def recover() -> None:
            taken = recover_builds(ctx, stuck_after)
            if taken:
                print(f"conductor {name}: took over {len(taken)} unfinished build(s)",
                      flush=True)
            reclaim(ctx, reclaim_after)

        def recover_all() -> None:   # at each pass, moves too: a conductor died mid-move
            recover()
            moved = recover_moves(ctx, move_after)
            if moved:
                print(f"conductor {name}: took over {len(moved)} unfinished move(s)",
                      flush=True)

        recover()
        with notify.registered(os.path.join(config.data_dir, "run")):
            wait_for_stop(
                tick=periodically(interval, recover_all) if interval else lambda: None,
                ready=lambda: print(
                    f"conductor {name}: ConductorRPC on "
                    f"{common.redact(str(config.get('DEFAULT', 'transport_url')))}; "
                    f"Placement at {config.get('placement_client', 'endpoint')}",
                    flush=True))
    finally:
        heartbeat.stop()
        bus.close()   # its handlers finish first, and need the leases renewed
        leases.stop()
        buses.close()
        placement.close()
        if network is not None:
            network.close()
        engines.dispose()
        engine.dispose()
    print(f"conductor {name} stopped", flush=True)
    return 0
