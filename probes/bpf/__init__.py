"""CO-RE BPF probes: the libbpf binding (:mod:`.libbpf`) and the probe base (:mod:`.probe`)."""
