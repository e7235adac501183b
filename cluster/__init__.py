"""The production topology on one machine (`make cluster`): see cluster/runtime.py."""
