package inspector

// CanonicalHashReference exposes the reference definition of the canonical
// hash to the package's external tests (which can use the simulator).
var CanonicalHashReference = canonicalHashSlow
