# The service image: code and locked dependencies, no bundle (docs/operations.md, "Image").
# Bundles are fetched at pod start and while running (scripts/bundle_sync.py), because the
# content pipeline publishes all day: a new bundle must not need a new image or a restart.
#
#   docker build -t news-delivery:1.0.0 .
#   docker run -p 8000:8000 -v /srv/news/bundles:/bundles/served:ro \
#     -e NEWS_COMMENTS_DSN=postgresql://news@db/news news-delivery:1.0.0

# The bases are build arguments: CI builds from Debian-package bases it makes itself, with no
# image registry (tests/test_image.py; docs/operations.md, "Image").
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG NODE_IMAGE=node:22-bookworm-slim

# -- build: a virtual environment from the hashed lock, wheels only ---------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.txt /tmp/requirements.txt
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes --no-deps --only-binary=:all: \
      -r /tmp/requirements.txt \
 && find /opt/venv -name __pycache__ -prune -exec rm -rf {} +

# -- assets: Swagger UI for /docs, from the pinned npm lock (runtime dependencies only;
# install scripts are not run: swagger-ui-dist needs none) ------------------------------
FROM ${NODE_IMAGE} AS assets
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error

# -- runtime: the venv, the code, an unprivileged user ----------------------------------
FROM ${PYTHON_IMAGE}
# Not "news": Debian's base-passwd already has a news user and group (uid and gid 9).
RUN groupadd --system --gid 10001 delivery \
 && useradd --system --uid 10001 --gid delivery --no-create-home --shell /usr/sbin/nologin \
      delivery \
 && mkdir -p /bundles /tmp/metrics && chown delivery:delivery /bundles /tmp/metrics
COPY --from=build /opt/venv /opt/venv
WORKDIR /srv/news
COPY app/ app/
COPY scripts/ scripts/
COPY --from=assets /src/node_modules/swagger-ui-dist/ node_modules/swagger-ui-dist/
# PYTHONPATH: scripts/*.py import `app` from here (make install's editable install does it
# on a development machine).
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/srv/news \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NEWS_BIND=0.0.0.0:8000 \
    NEWS_BUNDLE_DIR=/bundles/served \
    NEWS_WORKER_CLASS=gthread \
    NEWS_ACCESS_LOG=- \
    PROMETHEUS_MULTIPROC_DIR=/tmp/metrics
USER 10001:10001
EXPOSE 8000
# Liveness only: /ready also depends on the database, which a restart would not fix.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2).status != 200)"]
# SIGTERM: gunicorn stops accepting, lets requests in flight finish (graceful_timeout 30 s).
STOPSIGNAL SIGTERM
CMD ["gunicorn", "-c", "app/gunicorn_conf.py", "app.wsgi:app"]
