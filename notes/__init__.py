"""Notes: what Nexus keeps about the person (standing instructions,
preferences, lasting facts), found in their own words and carried into
every context of a session that can see them."""
