"""Object-store settings for Spark reads: Spark users configure S3 through Hadoop's s3a keys
(``spark.hadoop.fs.s3a.*``); pqindex's reader takes them as ``storage_options``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pqindex._native import is_object_url

# Hadoop s3a key -> object_store key.
_S3A_KEYS = {
    "fs.s3a.access.key": "access_key_id",
    "fs.s3a.secret.key": "secret_access_key",
    "fs.s3a.session.token": "session_token",
    "fs.s3a.endpoint.region": "region",
}


def is_remote(paths: Sequence[str]) -> bool:
    """Whether the source names objects in a store rather than local files."""
    return any(is_object_url(p) for p in paths)


def s3a_storage_options(spark: Any) -> dict[str, str]:
    """``storage_options`` from the session's Hadoop configuration (``spark.hadoop.fs.s3a.*``
    settings land there), so a job configured for Spark's own s3a reader needs nothing new."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()

    def get(key: str) -> str | None:
        value = conf.get(key)
        return str(value) if value is not None and str(value) != "" else None

    out = {target: v for key, target in _S3A_KEYS.items() if (v := get(key)) is not None}
    endpoint = get("fs.s3a.endpoint")
    if endpoint is not None:
        if "://" not in endpoint:
            ssl = (get("fs.s3a.connection.ssl.enabled") or "true").lower() == "true"
            endpoint = ("https://" if ssl else "http://") + endpoint
        out["endpoint"] = endpoint
    path_style = get("fs.s3a.path.style.access")
    if path_style is not None:
        out["virtual_hosted_style_request"] = "false" if path_style.lower() == "true" else "true"
    return out


def storage_options_for(
    spark: Any, paths: Sequence[str], given: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The options a Spark read of ``paths`` uses: those given, else the session's s3a
    settings for S3 URLs, else none (the environment and standard credential chains)."""
    if not is_remote(paths):
        return dict(given) if given else None
    if given is not None:
        return dict(given)
    if any(p.startswith(("s3://", "s3a://")) for p in paths):
        return s3a_storage_options(spark) or None
    return None
