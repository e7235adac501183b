"""deploy/kubernetes/ (validated against the Kubernetes schemas) and the Dockerfile."""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
KUSTOMIZE_DIR = REPO / "deploy" / "kubernetes"
K8S_VERSION = "1.37.0"  # the newest schemas kubernetes-validate ships
CLUSTER_SCOPED = {"Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding"}


def render(directory: Path) -> list[dict[str, Any]]:
    """What `kubectl kustomize` gives for the features this kustomization uses:
    resources, namespace and images."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - {"apiVersion", "kind", "namespace", "resources", "images"}
    assert not unknown, f"render() does not know {unknown}"
    images = {i["name"]: i for i in kustomization.get("images", [])}
    objects = []
    for resource in kustomization["resources"]:
        for doc in yaml.safe_load_all((directory / resource).read_text()):
            if doc["kind"] not in CLUSTER_SCOPED and "namespace" in kustomization:
                doc["metadata"]["namespace"] = kustomization["namespace"]
            for container in containers(doc):
                name, _, tag = container["image"].partition(":")
                if name in images:
                    new = images[name]
                    container["image"] = f"{new.get('newName', name)}:{new.get('newTag', tag)}"
            objects.append(doc)
    return objects


def containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


@pytest.fixture(scope="module")
def objects() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in render(KUSTOMIZE_DIR)}


def test_every_manifest_validates_against_the_kubernetes_schemas() -> None:
    rendered = render(KUSTOMIZE_DIR)
    assert len(rendered) >= 7
    for doc in rendered:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_validator_rejects_a_broken_manifest(objects: dict[str, dict[str, Any]]) -> None:
    broken = yaml.safe_load(yaml.safe_dump(objects["Deployment"]))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["prot"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_render_matches_kubectl_kustomize() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(KUSTOMIZE_DIR)], capture_output=True, text=True, check=True
    ).stdout

    def key(doc: dict[str, Any]) -> tuple[str, str]:
        return doc["kind"], doc["metadata"]["name"]

    assert sorted(yaml.safe_load_all(out), key=key) == sorted(render(KUSTOMIZE_DIR), key=key)


def test_deployment_rolls_and_drains_safely(objects: dict[str, dict[str, Any]]) -> None:
    deployment = objects["Deployment"]
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pod = deployment["spec"]["template"]["spec"]
    app = next(c for c in pod["containers"] if c["name"] == "app")
    assert app["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert app["livenessProbe"]["httpGet"]["path"] == "/health"
    # The drain fits: preStop sleep + gunicorn's graceful timeout < the grace period.
    pre_stop = int(app["lifecycle"]["preStop"]["exec"]["command"][1])
    conf = (REPO / "app" / "gunicorn_conf.py").read_text()
    match = re.search(r"^graceful_timeout = (\d+)$", conf, re.M)
    assert match is not None
    assert pre_stop + int(match.group(1)) < pod["terminationGracePeriodSeconds"]
    for container in containers(deployment):
        assert "requests" in container["resources"] and "limits" in container["resources"]
        assert container["image"] == "news-delivery:1.0.0"
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    # A read-only root file system: what gunicorn and prometheus_client write is mounted.
    assert app["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m for m in app["volumeMounts"]}
    assert "/tmp" in mounts and not mounts["/tmp"].get("readOnly")  # worker heartbeats
    metrics_dir = next(e["value"] for e in app["env"] if e["name"] == "PROMETHEUS_MULTIPROC_DIR")
    assert metrics_dir.startswith("/tmp/")
    # Every secret the pods read exists, with that key.
    secret = objects["Secret"]
    for var in app["env"]:
        ref = var.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["stringData"]


def test_bundles_are_delivered_by_the_install_script(objects: dict[str, dict[str, Any]]) -> None:
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    init, sidecar = pod["initContainers"]
    assert (
        init["command"][:2] == ["python", "scripts/bundle_sync.py"] and "--once" in init["command"]
    )
    assert sidecar["restartPolicy"] == "Always" and "--once" not in sidecar["command"]
    app = next(c for c in pod["containers"] if c["name"] == "app")
    served = next(e["value"] for e in app["env"] if e["name"] == "NEWS_BUNDLE_DIR")
    for container in (init, sidecar):
        dest = container["command"][container["command"].index("--dest") + 1]
        assert dest == served
    assert (REPO / "scripts" / "bundle_sync.py").exists()


def test_autoscaling_and_disruption_budget(objects: dict[str, dict[str, Any]]) -> None:
    hpa, deployment = objects["HorizontalPodAutoscaler"], objects["Deployment"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 10)
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    resources = {m["containerResource"]["name"] for m in hpa["spec"]["metrics"]}
    assert resources == {"cpu", "memory"}
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    for kind in ("PodDisruptionBudget",):
        selector = objects[kind]["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items()
    assert objects["Service"]["spec"]["selector"].items() <= labels.items()


def test_only_the_ingress_reaches_the_pods(objects: dict[str, dict[str, Any]]) -> None:
    """A NetworkPolicy admits the ingress controller's pods alone, on the app's port; the
    pods trust X-Forwarded-For from one pod network, not from every private address."""
    policy, deployment = objects["NetworkPolicy"], objects["Deployment"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    assert peer["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "ingress-nginx"
    }
    assert peer["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "ingress-nginx"}
    app = next(
        c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "app"
    )
    assert [p["port"] for p in rule["ports"]] == [c["containerPort"] for c in app["ports"]]
    trusted = next(e["value"] for e in app["env"] if e["name"] == "NEWS_TRUSTED_PROXIES")
    (network,) = (ipaddress.ip_network(n) for n in trusted.split(","))
    assert network.prefixlen >= 16  # one pod network, not 10.0.0.0/8


def test_dockerfile() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, re.M)) >= 2  # multi-stage
    assert "--require-hashes" in text and "requirements.txt" in text
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and user[-1].split(":")[0] not in ("root", "0")
    assert re.search(r"^HEALTHCHECK .*", text, re.M) and "/health" in text
    for source in re.findall(r"^COPY (?!--from)(\S+)", text, re.M):
        assert (REPO / source).exists(), source
    # /docs serves Swagger UI from here (app/resources/docs.py): the image must carry it, and
    # it must be a runtime (not dev) npm dependency, since the image installs --omit=dev.
    from app.resources.docs import PROJECT_ROOT, SWAGGER_UI

    where = SWAGGER_UI.relative_to(PROJECT_ROOT).as_posix()
    assert re.search(rf"^COPY --from=\S+ \S+ {re.escape(where)}/?$", text, re.M), where
    package = json.loads((REPO / "package.json").read_text())
    assert SWAGGER_UI.name in package["dependencies"]


BUILD_DIR = KUSTOMIZE_DIR / "build"


def test_the_sharded_build_validates_and_hands_over_through_one_volume() -> None:
    """deploy/kubernetes/build: a plan Job, an Indexed Job of N shards, a merge Job of the
    same N, all on one shared work volume (docs/operations.md, "A sharded build on
    Kubernetes")."""
    rendered = render(BUILD_DIR)
    for doc in rendered:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    jobs = {doc["metadata"]["name"]: doc for doc in rendered if doc["kind"] == "Job"}
    plan, shards, merge = (jobs[f"news-build-{step}"] for step in ("plan", "shards", "merge"))
    spec = shards["spec"]
    assert spec["completionMode"] == "Indexed"
    count = spec["completions"]
    assert spec["parallelism"] == count and count > 1

    def command(job: dict[str, Any]) -> list[str]:
        (container,) = job["spec"]["template"]["spec"]["containers"]
        words = container["command"]
        return words[2].split() if words[:2] == ["sh", "-c"] else words

    def option(words: list[str], name: str) -> str:
        return words[words.index(name) + 1]

    steps = {name: command(job) for name, job in jobs.items()}
    for name, words in steps.items():
        assert words[:2] == ["python", "scripts/build_bundles.py"], name
        assert option(words, "--work") == "/work/run"
    assert option(steps["news-build-plan"], "--step") == "plan"
    assert option(steps["news-build-shards"], "--step") == "shard"
    # The shard index comes from the Indexed Job (build_bundles.py reads JOB_COMPLETION_INDEX).
    assert "--shard" not in steps["news-build-shards"]
    assert int(option(steps["news-build-shards"], "--shards")) == count
    assert int(option(steps["news-build-merge"], "--shards")) == count
    assert option(steps["news-build-merge"], "--step") == "merge"
    wait = merge["spec"]["template"]["spec"]["initContainers"][0]["command"][2]
    assert f"-ge {count}" in wait
    claims = {doc["metadata"]["name"] for doc in rendered if doc["kind"] == "PersistentVolumeClaim"}
    for job in (plan, shards, merge):
        pod = job["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["work"]["persistentVolumeClaim"]["claimName"] == "news-build-work"
        assert pod["restartPolicy"] == "Never" and pod["securityContext"]["runAsNonRoot"]
        for container in containers(job):
            assert container["image"] == "news-delivery:1.0.0"
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert "requests" in container["resources"] and "limits" in container["resources"]
        for volume in volumes.values():
            claim = volume.get("persistentVolumeClaim", {}).get("claimName")
            assert claim is None or claim in claims or claim == "news-bundle-origin"
    work = next(d for d in rendered if d["metadata"]["name"] == "news-build-work")
    assert work["spec"]["accessModes"] == ["ReadWriteMany"]
