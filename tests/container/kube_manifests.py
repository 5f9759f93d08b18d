#!/usr/bin/env python3
"""contrib/kubernetes's pods, made playable by podman kube play on one host.

Reads the resources kustomization.yaml lists and writes one file per Pod
(NAME.yaml in --out). Only what the test needs is changed, each named below:
  - pods named with --prefix, so that the test never touches a pod of
    someone else's;
  - kinds other than Pod left out (podman 4.3 plays Pods, Deployments and
    PVCs; the Service's name is replaced by 127.0.0.1 instead);
  - images: the test's (kustomize's images: entries do this for a cluster);
  - hostNetwork, and every address and port a free one on loopback;
  - --transport tcp (the host's RDMA devices are not under test);
  - Redis with DEBUG allowed from loopback, for DEBUG DIGEST;
  - Secret volumes as hostPath directories holding the same files (podman
    4.3 has no Secret objects; the files' names and paths are kept);
  - emptyDir volumes named after their pod: podman 4.3 makes a named volume
    of each, which pods that name theirs alike would share;
  - containers' ports left out (on the host's network they name nothing,
    and podman 4.3 refuses them there);
  - probes left out: podman runs them as commands inside the container
    (curl), which a minimal image has not; the test asks the same paths.
"""
import argparse
import os
import sys

import yaml


def set_flag(args, flag, value):
    """args with FLAG's value replaced; FLAG must be there."""
    if flag not in args:
        sys.exit(f"kube_manifests: {flag} not in {args}")
    i = args.index(flag)
    return args[: i + 1] + [value] + args[i + 2 :]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--contrib", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--sidecar-image", required=True)
    p.add_argument("--redis-image", required=True)
    p.add_argument("--secrets", required=True, help="a directory per Secret, by its name")
    p.add_argument("--prefix", default="")
    for port in ("master", "replica", "sidecar", "server-metrics", "client-metrics"):
        p.add_argument(f"--{port}-port", required=True)
    a = p.parse_args()

    with open(os.path.join(a.contrib, "kustomization.yaml")) as f:
        resources = yaml.safe_load(f)["resources"]
    docs = []
    for r in resources:
        with open(os.path.join(a.contrib, r)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]

    loopback = "127.0.0.1"
    master = f"{loopback}:{a.master_port}"
    for pod in (d for d in docs if d["kind"] == "Pod"):
        name = pod["metadata"]["name"]
        pod["metadata"]["name"] = a.prefix + name
        spec = pod["spec"]
        spec["hostNetwork"] = True
        redis_port = a.master_port if name == "redis-master" else a.replica_port
        for c in spec["containers"]:
            args = [str(x) for x in c.get("args", [])]
            image = c["image"].split(":")[0]
            if image == "redis":
                c["image"] = a.redis_image
                args = set_flag(args, "--port", redis_port)
                args += ["--bind", loopback, "--enable-debug-command", "local"]
            elif image == "redis-rdma-sync" and c["command"] == ["rdma-server"]:
                c["image"] = a.sidecar_image
                args = set_flag(args, "--redis", f"{loopback}:{redis_port}")
                args = set_flag(args, "--listen", loopback)
                args = set_flag(args, "--port", a.sidecar_port)
                args = set_flag(args, "--transport", "tcp")
                args = set_flag(args, "--metrics", f"{loopback}:{a.server_metrics_port}")
            elif image == "redis-rdma-sync" and c["command"] == ["rdma-client"]:
                c["image"] = a.sidecar_image
                # <sidecar-host> <port>: the Service's name and port.
                if args[:2] != ["redis-master", "12345"]:
                    sys.exit(f"kube_manifests: rdma-client's sidecar is not redis-master 12345: {args}")
                args = [loopback, a.sidecar_port] + args[2:]
                args = set_flag(args, "--redis", f"{loopback}:{redis_port}")
                args = set_flag(args, "--master", master)
                args = set_flag(args, "--transport", "tcp")
                args = set_flag(args, "--metrics", f"{loopback}:{a.client_metrics_port}")
            else:
                sys.exit(f"kube_manifests: a container the test does not know: {c['name']} ({c['image']})")
            c["args"] = args
            c["imagePullPolicy"] = "Never"
            c.pop("ports", None)
            c.pop("livenessProbe", None)
            c.pop("readinessProbe", None)
        renamed = {}
        for v in spec.get("volumes", []):
            if "secret" in v:
                path = os.path.join(a.secrets, v.pop("secret")["secretName"])
                v["hostPath"] = {"path": path, "type": "Directory"}
            elif "emptyDir" in v:
                renamed[v["name"]] = v["name"] = f"{pod['metadata']['name']}-{v['name']}"
        for c in spec["containers"]:
            for m in c.get("volumeMounts", []):
                m["name"] = renamed.get(m["name"], m["name"])
        out = os.path.join(a.out, f"{name}.yaml")
        with open(out, "w") as f:
            yaml.safe_dump(pod, f, sort_keys=False)
        print(out)


if __name__ == "__main__":
    main()
