#!/bin/sh
# Remakes the screenshots of docs/moderation.md ("The moderator's page") from the browser
# test that works the queues: docs/images/moderation-queue.png and moderation-decision.png.
# Needs `make install` and Debian's chromium, as the test does.
set -eu
cd "$(dirname "$0")/../.."
MODERATION_SCREENSHOTS=docs/images .venv/bin/pytest -q -p no:cacheprovider \
  tests/test_moderation_page.py -k works_each_queue
