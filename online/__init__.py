"""Online signals: click logs, position propensities, click-derived relevance, interleaving and the
offline–online tracker. Comes after ``evaluation`` in the one-way flow: it may import pooling, judgements
and evaluation; nothing imports it."""
