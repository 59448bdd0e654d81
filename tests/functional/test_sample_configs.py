"""etc/stratus/*.conf are what stratus/config_samples.py writes from the option list, every
option belongs to a role, and each file loads; etc/systemd has a unit per role."""

from __future__ import annotations

import configparser
from pathlib import Path

from stratus import config as configuration
from stratus import config_samples

ETC = Path(__file__).resolve().parents[2] / "etc"


def test_sample_files_are_generated_from_the_option_list():
    for role in config_samples.ROLES:
        path = ETC / "stratus" / role.file
        assert path.read_text(encoding="utf-8") == config_samples.render(role), (
            f"{path} is stale: run python -m stratus.config_samples etc/stratus")
    names = {p.name for p in (ETC / "stratus").glob("*.conf")}
    assert names == {r.file for r in config_samples.ROLES} == {
        "placement-api.conf", "compute-api.conf", "network-api.conf", "scheduler.conf",
        "conductor.conf", "compute.conf", "identity-api.conf", "image-api.conf"}


def test_every_option_has_a_role():
    placed = {key for role in config_samples.ROLES for key in role.options}
    known = {(o.section, o.name) for o in configuration.OPTIONS}
    assert placed <= known
    assert known - placed == config_samples.NOT_IN_A_ROLE, (
        "give new options a role in stratus/config_samples.py")


def test_each_sample_loads_with_its_values():
    for role in config_samples.ROLES:
        path = ETC / "stratus" / role.file
        config = configuration.load([str(path)], environ={})
        for (section, name), value in role.values.items():
            assert config.get(section, name) == value


def test_a_systemd_unit_per_role():
    units = {p.name: p for p in (ETC / "systemd").glob("*.service")}
    expected = {"stratus-placement-api.service": "placement-api.conf",
                "stratus-compute-api.service": "compute-api.conf",
                "stratus-network-api.service": "network-api.conf",
                "stratus-scheduler.service": "scheduler.conf",
                "stratus-conductor.service": "conductor.conf",
                "stratus-compute@.service": "compute.conf",
                "stratus-identity-api.service": "identity-api.conf",
                "stratus-image-api.service": "image-api.conf"}
    assert set(units) == set(expected)
    for name, conf in expected.items():
        unit = configparser.ConfigParser(interpolation=None, strict=False)
        unit.optionxform = str   # type: ignore[assignment,method-assign]
        unit.read(units[name])
        assert unit["Unit"]["After"] == "network-online.target"
        assert unit["Service"]["Restart"] == "on-failure"
        assert unit["Service"]["User"] == "stratus"
        assert f"--config-file /etc/stratus/{conf}" in unit["Service"]["ExecStart"]


def test_no_secret_is_put_on_a_command_line():
    """Passwords live in the configuration files and environment files (readable by
    their owner), never in a unit's ExecStart or a sample's command, which `ps` shows."""
    commands = [role.command for role in config_samples.ROLES]
    for unit in (ETC / "systemd").glob("*.service"):
        parsed = configparser.ConfigParser(interpolation=None, strict=False)
        parsed.optionxform = str   # type: ignore[assignment,method-assign]
        parsed.read(unit)
        commands.append(parsed["Service"]["ExecStart"])
    for command in commands:
        assert "PASSWORD" not in command and "://" not in command, command


def test_help_is_help_not_a_directory(tmp_path, monkeypatch, capsys):
    """``python -m stratus.config_samples --help`` once wrote the samples into a directory
    named ``--help``."""
    import pytest

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        config_samples.main(["--help"])
    assert done.value.code == 0
    assert "sample configuration file" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    written = config_samples.main([str(tmp_path / "out")])
    assert written == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        role.file for role in config_samples.ROLES)


def test_a_directory_that_cannot_be_made_is_one_line_and_exit_2(tmp_path, capsys):
    import pytest

    taken = tmp_path / "a-file"
    taken.write_text("")
    with pytest.raises(SystemExit) as done:
        config_samples.main([str(taken)])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert f"cannot write the samples in {taken}: File exists" in err
    assert "Traceback" not in err
