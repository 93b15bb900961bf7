package inspector

// OracleCanonicalHash exposes the canonical hash of earlier versions (the
// oracle CanonicalHash must agree with) to the package's external tests,
// which can use the simulator.
var OracleCanonicalHash = oracleCanonicalHash
