// Package hashkey holds what Ethereum hashes and how it encodes tries: the
// 32-byte Hash and legacy Keccak-256 (Keccak256, and Hasher for a hot loop);
// the Key a parent node uses to refer to a child (keccak-256 of the child's
// RLP, or the RLP itself when it is shorter than 32 bytes; void means not yet
// computed); an allocation-free RLP encoder and a strict decoder (Split), which
// rejects every non-canonical encoding; the leaf, extension and branch node
// encodings; hex-prefix path encoding and nibble helpers; and EmptyRoot and
// EmptyCodeHash. Everything here matches go-ethereum byte for byte and is
// checked against the ethereum/tests RLP vectors.
package hashkey
