"""Communication between ranks: a Communicator protocol, a simulated world, collectives, costs.

Import modules by full name (``minitorch.comm.simworld``); nothing is re-exported here.
"""
