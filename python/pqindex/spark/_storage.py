"""Object-store settings for Spark jobs: Spark users configure S3 through Hadoop's s3a keys;
pqindex's reader takes them as ``storage_options``.

The keys are read from the session's conf (``spark.conf``), where a session or a Spark
Connect server sets them: ``spark.hadoop.fs.s3a.*`` (how ``--conf`` passes Hadoop settings)
or ``fs.s3a.*`` set on the session, which Spark lays over the Hadoop configuration for the
session's own file reads. A classic session also has the Hadoop configuration object
(``core-site.xml`` and settings made on it directly); it is read first and the session's
conf wins, as in Spark. ``storage_options=`` given to a function replaces all of this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pqindex._native import is_object_url
from pqindex.spark._session import is_connect

# Hadoop s3a key -> object_store key.
_S3A_KEYS = {
    "fs.s3a.access.key": "access_key_id",
    "fs.s3a.secret.key": "secret_access_key",
    "fs.s3a.session.token": "session_token",
    "fs.s3a.endpoint.region": "region",
}
_S3A_OTHER = ("fs.s3a.endpoint", "fs.s3a.connection.ssl.enabled", "fs.s3a.path.style.access")
_HADOOP = "spark.hadoop."
#: Data source option prefix for storage options given by name: ``storage.endpoint``.
OPTION_PREFIX = "storage."


def is_remote(paths: Sequence[str]) -> bool:
    """Whether the source names objects in a store rather than local files."""
    return any(is_object_url(p) for p in paths)


def s3a_settings(spark: Any) -> dict[str, str]:
    """The session's ``fs.s3a.*`` settings (one conf round trip on Spark Connect)."""
    wanted = (*_S3A_KEYS, *_S3A_OTHER)
    found: dict[str, str] = {}
    if not is_connect(spark):
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()
        for key in wanted:
            value = hadoop.get(key)
            if value is not None and str(value) != "":
                found[key] = str(value)
    conf: dict[str, str] = spark.conf.getAll  # a property
    for key in wanted:
        for name in (_HADOOP + key, key):  # a plain fs.s3a.* set on the session wins
            value = conf.get(name)
            if value is not None and value != "":
                found[key] = value
    return found


def from_s3a(settings: Mapping[str, str]) -> dict[str, str]:
    """``storage_options`` from Hadoop s3a settings."""
    out = {target: settings[key] for key, target in _S3A_KEYS.items() if key in settings}
    endpoint = settings.get("fs.s3a.endpoint")
    if endpoint:
        if "://" not in endpoint:
            ssl = settings.get("fs.s3a.connection.ssl.enabled", "true").lower() == "true"
            endpoint = ("https://" if ssl else "http://") + endpoint
        out["endpoint"] = endpoint
    path_style = settings.get("fs.s3a.path.style.access")
    if path_style is not None:
        out["virtual_hosted_style_request"] = "false" if path_style.lower() == "true" else "true"
    return out


def from_options(options: Mapping[str, str]) -> dict[str, str] | None:
    """``storage_options`` from data source options: ``storage.<key>`` by name, and s3a keys
    (``fs.s3a.*`` or ``spark.hadoop.fs.s3a.*``) translated; None when there are none."""
    s3a = {
        k.removeprefix(_HADOOP): v
        for k, v in options.items()
        if k.removeprefix(_HADOOP) in (*_S3A_KEYS, *_S3A_OTHER)
    }
    out = from_s3a(s3a)
    out |= {k[len(OPTION_PREFIX) :]: v for k, v in options.items() if k.startswith(OPTION_PREFIX)}
    return out or None


def storage_options_for(
    spark: Any, paths: Sequence[str], given: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The options a Spark job on ``paths`` uses: those given, else the session's s3a
    settings for S3 URLs, else none (the environment and standard credential chains)."""
    if not is_remote(paths):
        return dict(given) if given else None
    if given is not None:
        return dict(given)
    if any(p.startswith(("s3://", "s3a://")) for p in paths):
        return from_s3a(s3a_settings(spark)) or None
    return None
