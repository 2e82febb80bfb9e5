"""Runtime observation of a provisioned stack: host access to its hosts, the agent its client
hosts run, the cluster's status and broker logs, and the open drills heal must look at."""
