"""Offline bundle builder: validate source JSONL, compile per-language files, swap atomically."""
