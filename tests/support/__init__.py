"""Helpers the tests share that are not tests themselves (a Spark standalone cluster)."""
