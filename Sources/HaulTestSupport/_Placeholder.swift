// HaulTestSupport
