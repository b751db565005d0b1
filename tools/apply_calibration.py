#!/usr/bin/env python3
"""Writes the <efficiency> rows that `rackplan calibrate DATA.yaml --format json` fitted into
every topology file: the rows of the accelerator family and precisions measured, and the pooled
prior (for any other precision, and the only row of a family nobody measured). Replaces the rows and
their comment from an earlier run; everything else in the files stays as it is.
Usage: tools/apply_calibration.py [RACKPLAN] [DATA.yaml | FIT.json]  (from the source root; FIT.json:
what `rackplan calibrate DATA.yaml --format json` printed)"""
import glob
import json
import re
import subprocess
import sys

rackplan = sys.argv[1] if len(sys.argv) > 1 else "build/rackplan"
data = sys.argv[2] if len(sys.argv) > 2 else "calibration/measurements.yaml"
if data.endswith(".json"):  # calibrate's JSON output, already computed
    fit = json.load(open(data))
else:
    fit = json.loads(subprocess.run([rackplan, "calibrate", data, "--format", "json"], check=True,
                                    capture_output=True, text=True).stdout)


def row(fields, precision=None, pooled=False):
    def g(v):  # as rackplan prints %.3g
        return "%.3g" % v
    return ('  <efficiency%s compute="%s" memory="%s" scale_up="%s" scale_out="%s" experts="%s"'
            ' latency="%s" sequence_s="%s" fitted_to="%s"%s/>\n'
            % (' precision="%s"' % precision if precision else "", g(fields["compute"]), g(fields["memory"]),
               g(fields["scale_up"]), g(fields["scale_out"]), g(fields["experts"]), g(fields["latency"]), g(fields["sequence_s"]),
               fields["fitted_to"], ' pooled="true"' if pooled else ""))


COMMENT = ("  <!-- calibrated: fitted by `rackplan calibrate calibration/measurements.yaml` (written by\n"
           "       tools/apply_calibration.py); used only by the estimate option. fitted_to: the measurements' ids;\n"
           "       pooled: the prior for a family not measured, every family's geometric mean (README, \"Calibrated estimates\") -->\n")
for path in sorted(glob.glob("topologies/*.xml")):
    text = open(path).read()
    text = re.sub(r"  <!-- calibrated:.*?-->\n", "", text, flags=re.S)
    text = re.sub(r"  <efficiency [^>]*/>\n", "", text)
    family = re.search(r'<accelerator name="[^"]*" family="([^"]*)"', text).group(1)
    rows = [row(g, g["weights"]) for g in fit["groups"] if g["family"] == family]
    rows.append(row(fit["pooled"], pooled=True))
    text = text.replace("</topology>", COMMENT + "".join(rows) + "</topology>")
    open(path, "w").write(text)
