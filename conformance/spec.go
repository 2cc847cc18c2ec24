package conformance

import (
	"fmt"
	"strings"
)

// specOK lists, per scenario, the topologies (R5, R1, PG, E3, Z3) whose
// cell of the catalogue's specification table (docs/conformance.md) says
// OK: there the property must hold whatever the backend's Guarantees say.
// Elsewhere the expectation is left to the Guarantees. A harness names its
// topology in Harness.Spec.
var specOK = map[string]string{
	"S01": "R5 R1 PG E3 Z3", "S02": "R5 R1 PG E3 Z3", "S03": "R5 R1 PG E3 Z3",
	"S04": "R5 R1 E3", "S05": "R5 R1 Z3", "S06": "R5 R1 Z3",
	"S08": "PG", "S09": "R1 PG E3 Z3", "S10": "R5 PG", "S11": "R5 R1",
	"S12": "R5 R1 PG E3 Z3", "S13": "R5 R1 E3 Z3", "S15": "R5 PG Z3",
	"S16": "E3 Z3", "S18": "E3 Z3", "S19": "R5 E3 Z3", "S20": "PG E3 Z3",
	"S21": "PG E3 Z3", "S22": "R5 PG", "S23": "E3 Z3", "S24": "R5",
	"S25": "PG E3 Z3", "S26": "PG", "S27": "E3 Z3", "S30": "R5 R1 E3 Z3",
	"S31": "PG E3 Z3", "S32": "PG E3 Z3",
}

// specDeviations are the places where the suite expects less than an OK
// cell of the specification table, each with its reason (shown in the report). Any
// other such place fails the run: a backend may not lower its promises
// below the specification silently.
var specDeviations = map[string]string{
	"PG/S08": "pgadvisory enforces the lease TTL (idle_session_timeout ends a holder's session), so a holder paused past it loses the lock like on every TTL-based backend; a no-TTL mode would keep ME at the liveness cost the spec accepts",
}

// checkSpec compares an expectation with the specification table's cell
// for the harness's topology. It returns a problem when the suite expects a break
// where the specification says OK and no deviation is documented, and
// otherwise a note for the report ("" if there is nothing to say).
func checkSpec(h *Harness, id, expected string) (note string, problem string) {
	if h.Spec == "" || !strings.Contains(" "+specOK[id]+" ", " "+h.Spec+" ") {
		return "", ""
	}
	switch expected {
	case "holds", "measure":
		return "", ""
	case "breaks":
		if why, ok := specDeviations[h.Spec+"/"+id]; ok {
			return "deviates from the specification table (OK): " + why, ""
		}
		return "", fmt.Sprintf("the specification table (docs/conformance.md) says %s must hold on %s, but the suite expects it to break (Guarantees promise less): document the deviation in specDeviations or keep the promise", id, h.Spec)
	default: // n/a, not run: the harness cannot exercise it here
		return "the specification table says OK: not covered by this harness", ""
	}
}
