import DBus
import Loop
import WhereaboutsCore
import WhereaboutsProviders
