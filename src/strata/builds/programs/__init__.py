"""Program versions: what a pipeline declares, how its transforms are found, and the
fingerprint that versions their code."""
