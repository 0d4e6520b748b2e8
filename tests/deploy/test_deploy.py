"""deploy/: the Prometheus rules (promtool check and unit tests), the scrape config, and the
Kubernetes manifests parsed and checked for what a GPU node's monitor needs."""
import os
import re
import shutil
import subprocess
import unittest

import yaml

ROOT = os.environ.get("GM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
DEPLOY = os.path.join(ROOT, "deploy")
PROMTOOL = shutil.which("promtool")


def load(*path):
    with open(os.path.join(DEPLOY, *path)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


@unittest.skipUnless(PROMTOOL, "promtool (Debian package prometheus) is not installed")
class Prometheus(unittest.TestCase):
    def promtool(self, *args, cwd=None):
        p = subprocess.run([PROMTOOL] + list(args), capture_output=True, text=True, cwd=cwd,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout

    def test_rules_check(self):
        out = self.promtool("check", "rules", "gpumon-alerts.yml", "gpumon-recording.yml",
                            cwd=os.path.join(DEPLOY, "prometheus"))
        self.assertIn("SUCCESS: 6 rules found", out)

    def test_rules_unit_tests(self):
        self.promtool("test", "rules", "alerts_test.yml",
                      cwd=os.path.join(DEPLOY, "prometheus", "tests"))

    def test_scrape_config(self):
        self.promtool("check", "config", "prometheus.yml", cwd=os.path.join(DEPLOY, "prometheus"))
        cfg = load("prometheus", "prometheus.yml")[0]
        jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
        self.assertEqual(jobs["gpumon"]["metrics_path"], "/metrics")

    def test_exactly_the_alerts(self):
        rules = load("prometheus", "gpumon-alerts.yml")[0]["groups"][0]["rules"]
        got = {r["alert"]: r for r in rules}
        want = {
            "GPUXidError": ("DCGM_FI_DEV_XID_ERRORS > 0", None, "critical"),
            "GPUUncorrectableEccError": ("increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[5m]) > 0", None,
                                         "critical"),
            "GPURowRemapFailure": ("DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", None, "critical"),
            "GPUTemperatureHigh": ("DCGM_FI_DEV_GPU_TEMP > 85", "5m", "warning"),
            "GPUMemoryNearlyFull": (
                "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.95", "10m",
                "warning"),
            "GpumonTargetDown": ('up{job="gpumon"} == 0', "2m", "critical"),
        }
        self.assertEqual(set(got), set(want))
        for name, (expr, for_, sev) in want.items():
            with self.subTest(alert=name):
                self.assertEqual(got[name]["expr"].strip(), expr)
                self.assertEqual(got[name].get("for"), for_)
                self.assertEqual(got[name]["labels"], {"severity": sev})


class Kubernetes(unittest.TestCase):
    def setUp(self):
        self.docs = {d["kind"]: d for f in ("gpumon-daemonset.yaml", "service.yaml",
                                            "servicemonitor.yaml") for d in load("kubernetes", f)}

    def test_daemonset(self):
        ds = self.docs["DaemonSet"]
        pod = ds["spec"]["template"]["spec"]
        self.assertEqual(ds["spec"]["selector"]["matchLabels"],
                         ds["spec"]["template"]["metadata"]["labels"])
        c = pod["containers"][0]
        env = {e["name"]: e for e in c["env"]}
        # The node's name into the Hostname label: spec.nodeName as NODE_NAME, which gpumon
        # reads (and GPU_MONITOR_HOSTNAME spells it out).
        self.assertEqual(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName")
        self.assertEqual(env["GPU_MONITOR_HOSTNAME"]["value"], "$(NODE_NAME)")
        self.assertEqual(c["args"][:1], ["serve"])
        self.assertIn("0.0.0.0:9400", c["args"])
        self.assertEqual(c["ports"], [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}])
        for probe in ("livenessProbe", "readinessProbe"):
            self.assertEqual(c[probe]["httpGet"], {"path": "/api/health", "port": "metrics"})
        self.assertTrue(c["resources"]["requests"] and c["resources"]["limits"])
        self.assertIn({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                      pod["tolerations"])
        self.assertEqual(pod["nodeSelector"], {"nvidia.com/gpu.present": "true"})
        self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])
        self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertTrue(pod["hostPID"])  # the host's /proc: GPU processes' user, command, pod
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        self.assertEqual(mounts["pod-resources"]["mountPath"], "/var/lib/kubelet/pod-resources")
        self.assertTrue(mounts["pod-resources"]["readOnly"])
        # ...from the host's own directory, where gpumon's default --pod-resources socket is.
        volumes = {v["name"]: v for v in pod["volumes"]}
        self.assertEqual(volumes["pod-resources"]["hostPath"]["path"],
                         "/var/lib/kubelet/pod-resources")
        with open(os.path.join(ROOT, "src", "collect", "podres.h")) as f:
            default = re.search(r'#define GM_PODRES_DEFAULT_SOCKET\s+"([^"]+)"', f.read()).group(1)
        self.assertEqual(os.path.dirname(default), mounts["pod-resources"]["mountPath"])
        self.assertFalse(any(a.startswith("--pod-resources") for a in c["args"]))
        self.assertNotIn("GPU_MONITOR_POD_RESOURCES", env)
        self.assertEqual(env["GPU_MONITOR_DB"]["value"].rsplit("/", 1)[0],
                         mounts["state"]["mountPath"])  # writable although the root is not

    def test_service_and_monitor(self):
        svc, sm = self.docs["Service"], self.docs["ServiceMonitor"]
        labels = self.docs["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
        self.assertEqual(svc["spec"]["selector"], labels)
        self.assertEqual(svc["spec"]["ports"][0]["name"], "metrics")
        self.assertEqual(svc["spec"]["ports"][0]["port"], 9400)
        self.assertEqual(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"])
        ep = sm["spec"]["endpoints"][0]
        self.assertEqual((ep["port"], ep["path"]), ("metrics", "/metrics"))
        # job="gpumon", as the alerts expect: the job label comes from this label's value.
        self.assertEqual(svc["metadata"]["labels"][sm["spec"]["jobLabel"]], "gpumon")


if __name__ == "__main__":
    unittest.main()
