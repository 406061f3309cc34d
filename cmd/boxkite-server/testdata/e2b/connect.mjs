// Sandbox.connect from a new process (flows.mjs spawns it with the id).
import { Sandbox } from 'e2b'

const sbx = await Sandbox.connect(process.argv[2])
const r = await sbx.commands.run('echo connected-out')
process.stdout.write(r.stdout)
