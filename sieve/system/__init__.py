"""Multi-GPU step simulation (seed §6.1, Figure 8): layer DAGs list-scheduled on resources."""
