"""Settings: explicit > STRATA_* environment > strata.toml > defaults, and clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from strata.errors import ConfigError
from strata.settings import Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No STRATA_* variables from the outside world; the working dir is empty."""
    for key in list(os.environ):
        if key.startswith("STRATA_"):
            monkeypatch.delenv(key)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def _toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_the_embedded_store(clean_env: Path) -> None:
    s = Settings.load()
    assert s.home == Path(".strata")
    assert s.database_url == f"sqlite:///{clean_env.resolve() / '.strata' / 'meta.db'}"
    assert s.lake_uri == (clean_env.resolve() / ".strata" / "lake").as_uri()
    assert s.is_embedded
    assert s.namespace == "strata"
    assert s.api_port == 5000
    assert s.read_tokens == ()


def test_precedence_explicit_env_toml_default(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _toml(clean_env / "strata.toml", 'namespace = "from-toml"\napi_port = 7001\n')
    monkeypatch.setenv("STRATA_NAMESPACE", "from-env")

    assert Settings.load(namespace="from-arg").namespace == "from-arg"
    assert Settings.load().namespace == "from-env"
    # A key only the file sets still comes from the file when env sets another.
    assert Settings.load().api_port == 7001
    monkeypatch.setenv("STRATA_API_PORT", "7002")
    assert Settings.load().api_port == 7002
    assert Settings.load(api_port=7003).api_port == 7003

    monkeypatch.delenv("STRATA_NAMESPACE")
    assert Settings.load().namespace == "from-toml"
    (clean_env / "strata.toml").unlink()
    assert Settings.load().namespace == "strata"
    # An explicit None means "not given", not "override with nothing".
    monkeypatch.setenv("STRATA_NAMESPACE", "from-env")
    assert Settings.load(namespace=None).namespace == "from-env"


def test_strata_table_and_config_path(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = clean_env / "conf"
    other.mkdir()
    _toml(other / "custom.toml", '[strata]\nhome = "state"\ngc_grace_seconds = 5\n')
    monkeypatch.setenv("STRATA_CONFIG", str(other / "custom.toml"))
    s = Settings.load()
    assert s.gc_grace_seconds == 5.0
    # A relative home in a config file is relative to that file, not to the cwd.
    assert s.home == other / "state"
    assert s.database_url == f"sqlite:///{(other / 'state').resolve() / 'meta.db'}"
    # An explicit config_file argument wins over STRATA_CONFIG.
    _toml(clean_env / "explicit.toml", "gc_grace_seconds = 9\n")
    assert Settings.load(config_file=clean_env / "explicit.toml").gc_grace_seconds == 9.0


def test_missing_explicit_config_file(clean_env: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml"):
        Settings.load(config_file=clean_env / "nope.toml")


def test_env_values_are_coerced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATA_BUILD_LEASE_SECONDS", "3")
    monkeypatch.setenv("STRATA_GC_GRACE_SECONDS", "1.5")
    monkeypatch.setenv("STRATA_READ_TOKENS", " a, b ,,c ")
    monkeypatch.setenv("STRATA_DATABASE_URL", "postgresql://u@db:5432/x")
    s = Settings.load()
    assert s.build_lease_seconds == 3.0
    assert s.gc_grace_seconds == 1.5
    assert s.read_tokens == ("a", "b", "c")
    assert s.database_url == "postgresql://u@db:5432/x"
    assert not s.is_embedded


@pytest.mark.parametrize(
    ("env", "value", "key"),
    [
        ("STRATA_API_PORT", "eighty", "api_port"),
        ("STRATA_GC_GRACE_SECONDS", "soon", "gc_grace_seconds"),
        ("STRATA_BUILD_LEASE_SECONDS", "-1", "build_lease_seconds"),
        ("STRATA_BUILD_LEASE_SECONDS", "later", "build_lease_seconds"),
        ("STRATA_LINEAGE_FOLD", "fork", "lineage_fold"),
    ],
)
def test_bad_env_value_names_the_key(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, key: str
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(ConfigError) as info:
        Settings.load()
    assert key in info.value.message
    assert value in info.value.message
    assert "STRATA_" + key.upper() in info.value.message


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('api_port = "x"', "api_port"),
        ("namespace = 5", "namespace"),
        ("gc_grace_seconds = [1]", "gc_grace_seconds"),
        ("lake_uri = true", "lake_uri"),
        ("home = 5", "home"),
        ("api_port = true", "api_port"),
        ("read_tokens = 5", "read_tokens"),
    ],
)
def test_bad_toml_value_names_the_key(clean_env: Path, line: str, key: str) -> None:
    _toml(clean_env / "strata.toml", line + "\n")
    with pytest.raises(ConfigError) as info:
        Settings.load()
    assert repr(key) in info.value.message


def test_unknown_toml_key_is_refused(clean_env: Path) -> None:
    _toml(clean_env / "strata.toml", 'namespace = "n"\nlake_url = "file:///typo"\n')
    with pytest.raises(ConfigError) as info:
        Settings.load()
    assert "lake_url" in info.value.message
    assert "lake_uri" in info.value.message  # the known keys are listed


def test_unknown_key_in_strata_table_is_refused(clean_env: Path) -> None:
    _toml(clean_env / "strata.toml", "[strata]\nbogus = 1\n")
    with pytest.raises(ConfigError, match="bogus"):
        Settings.load()


def test_unparsable_toml(clean_env: Path) -> None:
    _toml(clean_env / "strata.toml", "namespace = \n")
    with pytest.raises(ConfigError, match=r"strata\.toml"):
        Settings.load()


def test_unknown_explicit_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match="colour"):
        Settings.load(colour="blue")


def test_constructor_refuses_a_lease_of_no_time(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="build_lease_seconds"):
        Settings(home=tmp_path, build_lease_seconds=0)


def test_settings_nothing_reads_are_gone(clean_env: Path) -> None:
    """Removed settings are refused like any unknown key, not silently ignored."""
    _toml(clean_env / "strata.toml", "commit_retries = 3\n")
    with pytest.raises(ConfigError, match="commit_retries"):
        Settings.load()


def test_explicit_home_moves_store_and_lake(tmp_path: Path) -> None:
    s = Settings.load(home=tmp_path / "elsewhere")
    assert s.database_url == f"sqlite:///{(tmp_path / 'elsewhere').resolve() / 'meta.db'}"
    assert s.lake_uri == (tmp_path / "elsewhere" / "lake").resolve().as_uri()
    # Explicit URLs are kept as given.
    s = Settings(home=tmp_path, database_url="sqlite:///x.db", lake_uri="s3a://bucket/lake")
    assert (s.database_url, s.lake_uri) == ("sqlite:///x.db", "s3a://bucket/lake")


def test_a_bare_lake_path_becomes_a_file_uri(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spark would read a bare path on the cluster's default file system (HDFS on YARN)
    # while pyarrow reads this machine's: both must be told it is a local path.
    assert Settings(lake_uri="/data/lake").lake_uri == "file:///data/lake"
    monkeypatch.setenv("STRATA_LAKE_URI", "shared/lake")
    assert Settings.load().lake_uri == (clean_env.resolve() / "shared" / "lake").as_uri()


def test_a_relative_lake_path_in_the_config_file_is_relative_to_the_file(
    clean_env: Path, tmp_path: Path
) -> None:
    (tmp_path / "conf").mkdir()
    config = _toml(tmp_path / "conf" / "strata.toml", 'lake_uri = "lake"\n')
    assert Settings.load(config_file=config).lake_uri == (tmp_path / "conf" / "lake").as_uri()
