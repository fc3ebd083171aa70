"""Click logs, propensity estimates, click-derived labels, interleaving experiments and the
offline–online tracker."""
