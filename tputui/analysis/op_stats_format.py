"""The format version of cached op stats (op_stats.HostOpStats), in a module of its own so that
`tputui export` can look for cached entries before it imports the analysis (see map_pool).

Bump when HostOpStats or anything computed into it changes: cached entries of another version are
recomputed.
"""
FORMAT_VERSION = 5  # 4: the host's HLO module names; 5: the tool facts
