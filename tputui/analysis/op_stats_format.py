"""The kind and format version of cached op stats (op_stats.HostOpStats), in a module of its own so
that `tputui export` can look for cached entries before it imports the analysis (see map_pool).

Bump when HostOpStats or anything computed into it changes: cached entries of another version are
recomputed.
"""
FORMAT_VERSION = 8  # 4: the host's HLO module names; 6: its step grouping (event_grouping; 5 was its draft); 7: tool facts;
# 8: the batch size (batch_size.py) and the TF input facts (tf_input.py)
KIND = "opstats"  # the op stats' kind in the derived cache
