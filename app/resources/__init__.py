"""Falcon resources: one class per route, URL -> bundle slices -> bytes."""
